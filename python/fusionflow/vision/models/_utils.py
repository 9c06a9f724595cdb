"""What the model builders share: the legacy `pretrained=` interface, the num_classes check
against the weights, and the model registry behind list_models / get_model / get_weight."""
import functools
import inspect
import warnings

from ._weights import WeightsEnum

__all__ = ["list_models", "get_model", "get_model_builder", "get_model_weights", "get_weight"]

BUILTIN_MODELS = {}


def register_model(weights_enum, name=None):
    """Files a builder under its name, with the enum of the weights it accepts."""
    def wrap(fn):
        key = name or fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError("An entry is already registered under the name '%s'." % key)
        fn._weights_enum = weights_enum
        BUILTIN_MODELS[key] = fn
        return fn
    return wrap


def list_models(module=None):
    name = getattr(module, "__name__", None)
    return sorted(k for k, fn in BUILTIN_MODELS.items() if name is None or fn.__module__.rsplit(".", 1)[0] == name)


def get_model_builder(name):
    try:
        return BUILTIN_MODELS[name.lower()]
    except KeyError:
        raise ValueError("Unknown model %s" % name) from None


def get_model(name, **config):
    return get_model_builder(name)(**config)


def get_model_weights(name):
    fn = get_model_builder(name) if isinstance(name, str) else name
    enum_cls = getattr(fn, "_weights_enum", None)
    if enum_cls is None:
        raise ValueError("The WeightsEnum class for the specific method couldn't be retrieved.")
    return enum_cls


def get_weight(name):
    """'ResNet50_Weights.IMAGENET1K_V2' -> that enum member."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError("Invalid weight name provided: '%s'." % name) from None
    for fn in BUILTIN_MODELS.values():
        if fn._weights_enum.__name__ == enum_name:
            return fn._weights_enum.from_str(value_name)
    raise ValueError("The weight enum '%s' for the specific method couldn't be retrieved." % enum_name)


def handle_legacy_interface(default):
    """Lets a builder `fn(*, weights=None, progress=True, **kw)` be called the pre-0.13 way:
    positionally (weights, progress), and with pretrained=True/False, which means the `default`
    weights (an enum member, or a callable of the keyword arguments) or None. Both warn, as
    torchvision does."""
    def wrap(builder):
        kwonly = [n for n, p in inspect.signature(builder).parameters.items() if p.kind is p.KEYWORD_ONLY]

        @functools.wraps(builder)
        def inner(*args, **kwargs):
            if args:
                if len(args) > len(kwonly):
                    raise TypeError("%s() takes at most %d positional arguments (%d given)"
                                    % (builder.__name__, len(kwonly), len(args)))
                named = dict(zip(kwonly, args))
                warnings.warn("Using %s as positional parameter(s) is deprecated since 0.13 and may be removed in "
                              "the future. Please use keyword parameter(s) instead." % ", ".join(map(repr, named)))
                kwargs.update(named)
            weights = kwargs.get("weights", None)
            legacy_positional = isinstance(weights, bool) or (isinstance(weights, str) and weights == "legacy")
            if "pretrained" in kwargs and "weights" not in kwargs or legacy_positional:
                pretrained = kwargs.pop("weights") if legacy_positional else kwargs.pop("pretrained")
                chosen = None
                if pretrained:
                    chosen = default(kwargs) if callable(default) and not isinstance(default, WeightsEnum) else default
                    if not isinstance(chosen, WeightsEnum):
                        raise ValueError("No weights available for model %s" % builder.__name__)
                if not legacy_positional:
                    warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be removed in the "
                                  "future, please use 'weights' instead.")
                msg = ("Arguments other than a weight enum or `None` for 'weights' are deprecated since 0.13 and may "
                       "be removed in the future. The current behavior is equivalent to passing `weights=%s`."
                       % chosen)
                if pretrained:
                    msg += (" You can also use `weights=%s.DEFAULT` to get the most up-to-date weights."
                            % type(chosen).__name__)
                warnings.warn(msg)
                kwargs["weights"] = chosen
            return builder(**kwargs)
        return inner
    return wrap


def overwrite_named_param(kwargs, param, new_value):
    """The weights fix some constructor arguments (num_classes from their categories): fill
    them in, or refuse a contradicting one."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError("The parameter '%s' expected value %s but got %s instead."
                             % (param, new_value, kwargs[param]))
    else:
        kwargs[param] = new_value


def load_weights(model, weights, progress):
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


def num_classes_from(weights, kwargs):
    if weights is not None and weights.meta.get("categories") is not None:
        overwrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))


def make_divisible(v, divisor, min_value=None):
    """Channels rounded to a multiple of divisor, never more than 10% below v (MobileNet's rule)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def builder(name, enum_cls, construct, legacy_default="IMAGENET1K_V1", **fixed):
    """A public builder `name(*, weights=None, progress=True, **kwargs)`: weights checked
    against enum_cls, arguments the architecture fixes (a ResNeXt's groups) enforced, the
    legacy pretrained=True meaning the member named legacy_default (None: no weights); then
    construct(weights, progress, **kwargs) makes the model."""
    def build(*, weights=None, progress=True, **kwargs):
        weights = enum_cls.verify(weights)
        for key, value in fixed.items():
            overwrite_named_param(kwargs, key, value)
        return construct(weights, progress, **kwargs)
    build.__name__ = build.__qualname__ = name
    build.__module__ = getattr(construct, "func", construct).__module__
    build.__doc__ = ("torchvision.models.%s; weights: a %s member (or its name) or None, read from the local "
                     "torch hub cache, never downloaded." % (name, enum_cls.__name__))
    legacy = enum_cls[legacy_default] if legacy_default is not None else None
    return register_model(enum_cls, name)(handle_legacy_interface(legacy)(build))
