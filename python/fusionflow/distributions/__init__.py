"""fusionflow.distributions: probability distributions with sampling (seeded by
fusionflow.manual_seed), reparameterised rsample, log_prob, entropy and KL divergences, laid
out as torch.distributions.

Gamma, Beta and Dirichlet rsample carry implicit reparameterisation gradients (see
_gamma_grad.py); Poisson, Bernoulli, Categorical and OneHotCategorical have no rsample."""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, SoftmaxTransform, TanhTransform, Transform, identity_transform)
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential",
           "ExpRelaxedCategorical", "Gamma", "Independent", "Laplace", "LogNormal", "MixtureSameFamily",
           "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Poisson", "RelaxedOneHotCategorical", "TransformedDistribution", "Uniform",
           "constraints", "transforms", "kl_divergence", "register_kl",
           "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "SoftmaxTransform", "TanhTransform", "Transform", "identity_transform"]
