/* Random numbers on the device from FusionFlow's counter-based generator (the same seed
 * gives the same numbers on every FusionFlow backend; fusionflow.torch_device makes
 * torch.manual_seed seed it, as PyTorch seeds CUDA's). The stream is FusionFlow's, not
 * PyTorch's CPU Mersenne Twister: a program that draws on the device draws other numbers
 * than on PyTorch's CPU, as it would on CUDA. An explicit generator is refused: PyTorch's
 * generators are per device type, and there is none of this device's. */
#include "ffd.h"

namespace ffd {
namespace {

void no_generator(const c10::optional<at::Generator> &g, const char *what)
{
    TORCH_CHECK(!g || !g->defined(), what, ": a torch.Generator cannot draw on a FusionFlow device; its numbers come ",
                "from FusionFlow's generator (seeded by torch.manual_seed)");
}

/* FusionFlow's U[0, 1) or N(0, 1) numbers of self's shape, on self's backend */
Ref draw(const at::Tensor &self, bool normal, ff_dtype dt)
{
    int64_t ndim = self.dim();
    ff_tensor *r = normal ? ff_randn((int)ndim, self.sizes().data(), dt) : ff_rand((int)ndim, self.sizes().data(), dt);
    Ref host = own(r, "random");
    return own(ff_to(host.get(), backend_at(self.device().index())), "random");
}

ff_dtype float_dtype(const at::Tensor &self)
{
    return at::isFloatingType(self.scalar_type()) ? dtype_of(self.scalar_type()) : FF_F64;
}

at::Tensor &fill_with(at::Tensor &self, Ref values)
{
    check(ff_copy_(wrap(self).get(), values.get()), "random");
    return self;
}

at::Tensor &normal_(at::Tensor &self, double mean, double std, c10::optional<at::Generator> g)
{
    no_generator(g, "normal_");
    TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
    if (self.numel() == 0) return self;
    Ref r = draw(self, true, float_dtype(self));
    r = own(ff_binary_number(FF_BINARY_MUL, r.get(), ff_number_float(std)), "normal_");
    r = own(ff_binary_number(FF_BINARY_ADD, r.get(), ff_number_float(mean)), "normal_");
    return fill_with(self, std::move(r));
}

at::Tensor &uniform_(at::Tensor &self, double from, double to, c10::optional<at::Generator> g)
{
    no_generator(g, "uniform_");
    TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
    if (self.numel() == 0) return self;
    Ref r = draw(self, false, float_dtype(self));
    r = own(ff_binary_number(FF_BINARY_MUL, r.get(), ff_number_float(to - from)), "uniform_");
    r = own(ff_binary_number(FF_BINARY_ADD, r.get(), ff_number_float(from)), "uniform_");
    return fill_with(self, std::move(r));
}

/* 1 where U < p: dropout's mask (at::dropout draws through bernoulli_) */
at::Tensor &bernoulli_tensor_(at::Tensor &self, const at::Tensor &p, c10::optional<at::Generator> g)
{
    no_generator(g, "bernoulli_");
    if (self.numel() == 0) return self;
    Ref u = draw(self, false, FF_F64);
    Ref pp = operand(on_device(p) || p.dim() == 0 ? p : p.to(self.device()), backend_at(self.device().index()),
                     at::kDouble);
    return fill_with(self, own(ff_lt(u.get(), pp.get()), "bernoulli_"));
}

at::Tensor &bernoulli_(at::Tensor &self, double p, c10::optional<at::Generator> g)
{
    TORCH_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
    return ffd::bernoulli_tensor_(self, at::scalar_tensor(p, at::kDouble), g);
}

at::Tensor bernoulli(const at::Tensor &self, c10::optional<at::Generator> g)
{
    at::Tensor out = at::empty_like(self);
    return ffd::bernoulli_tensor_(out, self, g);
}

/* integers in [from, to): floor(U (to - from)) + from */
at::Tensor &random_from_(at::Tensor &self, int64_t from, c10::optional<int64_t> to, c10::optional<at::Generator> g)
{
    no_generator(g, "random_");
    TORCH_CHECK(to, "fusionflow device: random_ without an upper bound is not taken yet");
    TORCH_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    if (self.numel() == 0) return self;
    Ref u = draw(self, false, FF_F64);
    u = own(ff_binary_number(FF_BINARY_MUL, u.get(), ff_number_float((double)(*to - from))), "random_");
    u = own(ff_floor(u.get()), "random_");
    u = own(ff_binary_number(FF_BINARY_ADD, u.get(), ff_number_int(from)), "random_");
    return fill_with(self, std::move(u));
}

at::Tensor &random_to_(at::Tensor &self, int64_t to, c10::optional<at::Generator> g)
{
    return ffd::random_from_(self, 0, to, g);
}

at::Tensor multinomial(const at::Tensor &self, int64_t n, bool replacement, c10::optional<at::Generator> g)
{
    no_generator(g, "multinomial");
    c10::DeviceIndex dev = device_of({&self});
    Ref w = wrap(self);
    return unwrap(own(ff_multinomial(w.get(), n, replacement), "multinomial"), dev);
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("normal_", TORCH_FN(ffd::normal_));
    m.impl("uniform_", TORCH_FN(ffd::uniform_));
    m.impl("bernoulli_.float", TORCH_FN(ffd::bernoulli_));
    m.impl("bernoulli_.Tensor", TORCH_FN(ffd::bernoulli_tensor_));
    m.impl("bernoulli", TORCH_FN(ffd::bernoulli));
    m.impl("random_.from", TORCH_FN(ffd::random_from_));
    m.impl("random_.to", TORCH_FN(ffd::random_to_));
    m.impl("multinomial", TORCH_FN(ffd::multinomial));
}

namespace {
void op_manual_seed(int64_t seed) { ff_manual_seed((uint64_t)seed); }
} // namespace

TORCH_LIBRARY_FRAGMENT(fusionflow, m) { m.def("manual_seed(int seed) -> ()", &op_manual_seed); }
