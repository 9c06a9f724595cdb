"""RNN, LSTM, GRU and their cells, as torch.nn.modules.rnn: PyTorch's parameter names,
shapes, gate order and init, so state_dicts load both ways.

Each layer projects the input of every time step with one GEMM, then runs the time loop
in C: ff_rnn_layer (the whole direction as one autograd node), or with proj_size a Python
loop over ff_rnn_cell (a step: the recurrent GEMM, the gates and a hand-written backward
in one node). The cells (RNNCell, ...) call ff_rnn_cell once. Padded input and
PackedSequence take one path: the time steps are row blocks of a 2-d [sum of batch
sizes, features] tensor, a padded batch being the packed form with every batch size equal."""
import ctypes
import math

from ..._lib import C, check_status
from ..._tensor import cat, stack, uniform, wrap, zeros
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# ff_rnn_mode (include/ff/ops.h)
_TANH, _RELU, _LSTM, _GRU = 0, 1, 2, 3


def _cell(mode, xp, h, c, w_hh, b_hh):
    """One step: (h', c') (c' None but for the LSTM)."""
    ho, co = ctypes.c_void_p(), ctypes.c_void_p()
    check_status(C.ff_rnn_cell(mode, xp._ptr, h._ptr, None if c is None else c._ptr, w_hh._ptr,
                               None if b_hh is None else b_hh._ptr, ctypes.byref(ho), ctypes.byref(co)))
    return wrap(ho.value), (wrap(co.value) if co.value else None)


def _direction(mode, xp, sizes, h0, c0, w_hh, b_hh, w_hr, reverse):
    """One layer, one direction, over xp [sum(sizes), G H] whose step t is the next
    sizes[t] rows. Returns (out [sum(sizes), H_out], h_n, c_n): the whole loop in one C op
    (ff_rnn_layer), or, with a projection, the cell per step."""
    if w_hr is None:
        out, h, c = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        arr = (ctypes.c_int64 * len(sizes))(*sizes)
        check_status(C.ff_rnn_layer(mode, xp._ptr, len(sizes), arr, bool(reverse), h0._ptr,
                                    None if c0 is None else c0._ptr, w_hh._ptr, None if b_hh is None else b_hh._ptr,
                                    ctypes.byref(out), ctypes.byref(h), ctypes.byref(c)))
        return wrap(out.value), wrap(h.value), (wrap(c.value) if c.value else None)
    return _direction_cells(mode, xp, sizes, h0, c0, w_hh, b_hh, w_hr, reverse)


def _direction_cells(mode, xp, sizes, h0, c0, w_hh, b_hh, w_hr, reverse):
    """_direction as a Python loop over ff_rnn_cell. Sequences that end drop out of the
    batch's tail (sizes never grow), their last states set aside, as torch's packed path;
    the reverse direction starts each sequence at its own last step."""
    offs = [0]
    for b in sizes:
        offs.append(offs[-1] + b)
    steps = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    outs = [None] * len(sizes)
    done_h, done_c = [], []
    h, c = (h0.narrow(0, 0, sizes[-1]), None if c0 is None else c0.narrow(0, 0, sizes[-1])) if reverse else (h0, c0)
    for t in steps:
        b, n = sizes[t], h.shape[0]
        if b < n:  # forward: sequences ended
            done_h.append(h.narrow(0, b, n - b))
            h = h.narrow(0, 0, b)
            if c is not None:
                done_c.append(c.narrow(0, b, n - b))
                c = c.narrow(0, 0, b)
        elif b > n:  # reverse: sequences start
            h = cat([h, h0.narrow(0, n, b - n)], 0)
            if c is not None:
                c = cat([c, c0.narrow(0, n, b - n)], 0)
        h, c2 = _cell(mode, xp.narrow(0, offs[t], b), h, c, w_hh, b_hh)
        if w_hr is not None:
            h = h @ w_hr.mT
        c = c2
        outs[t] = h
    h_n = cat([h] + done_h[::-1], 0) if done_h else h
    c_n = None if c is None else (cat([c] + done_c[::-1], 0) if done_c else c)
    return (cat(outs, 0) if len(outs) > 1 else outs[0]), h_n, c_n


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer, got %r" % (hidden_size,))
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          "expects num_layers greater than 1, but got dropout=%s and num_layers=%d"
                          % (dropout, num_layers))
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than or equal to 1")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dtype = dtype or _dtype.float32
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden_size
        real_hidden = proj_size or hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = "_l%d%s" % (layer, "_reverse" if d else "")
                shapes = [("weight_ih", (gates, in_size)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(zeros(*shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden)), as torch's."""
        from .. import init
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for name in self._flat_weights_names:
            init.uniform_(getattr(self, name), -stdv, stdv)

    def flatten_parameters(self):
        """cuDNN's packed weight buffer; nothing to do here."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        dirs = 2 if self.bidirectional else 1
        per = len(self._flat_weights_names) // (self.num_layers * dirs)
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def _layer_params(self, layer, d):
        sfx = "_l%d%s" % (layer, "_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _mode_code(self):
        return {"LSTM": _LSTM, "GRU": _GRU, "RNN_TANH": _TANH, "RNN_RELU": _RELU}[self.mode]

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        is_lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size or self.hidden_size
        if packed:
            data, sizes = input.data, [int(b) for b in input.batch_sizes.tolist()]
            batch, unbatched = sizes[0], False
        else:
            x = input
            if x.ndim not in (2, 3):
                raise ValueError("%s: Expected input to be 2D or 3D, got %dD instead" % (type(self).__name__, x.ndim))
            unbatched = x.ndim == 2
            if unbatched:
                x = x.unsqueeze(1)
            elif self.batch_first:
                x = x.transpose(0, 1)
            steps, batch = x.shape[0], x.shape[1]
            if x.shape[2] != self.input_size:
                raise RuntimeError("input.size(-1) must be equal to input_size. Expected %d, got %d"
                                   % (self.input_size, x.shape[2]))
            data, sizes = x.reshape(steps * batch, self.input_size), [batch] * steps
        h0, c0 = self._initial_state(hx, is_lstm, unbatched, batch, dirs, real_hidden, data)
        if not packed and not sizes:
            raise RuntimeError("%s: Expected sequence length to be larger than 0 in RNN, got input %s"
                               % (type(self).__name__, list(input.shape)))
        if not packed and batch == 0:
            return self._empty_batch(len(sizes), dirs * real_hidden, h0, c0, data)
        if packed and input.sorted_indices is not None:
            h0 = h0.index_select(1, input.sorted_indices)
            c0 = None if c0 is None else c0.index_select(1, input.sorted_indices)
        mode = self._mode_code()
        hs, cs = [], []
        layer_in = data
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                layer_in = F.dropout(layer_in, self.dropout, True)
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_params(layer, d)
                k = layer * dirs + d
                xp = F.linear(layer_in, w_ih, b_ih)  # every time step's input projection: one GEMM
                o, h, c = _direction(mode, xp, sizes, h0[k], None if c0 is None else c0[k], w_hh, b_hh, w_hr, d == 1)
                outs.append(o)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if dirs == 1 else cat(outs, 1)
        h_n = stack(hs, 0)
        c_n = stack(cs, 0) if is_lstm else None
        if packed:
            if input.unsorted_indices is not None:
                h_n = h_n.index_select(1, input.unsorted_indices)
                c_n = None if c_n is None else c_n.index_select(1, input.unsorted_indices)
            out = PackedSequence(layer_in, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        else:
            out = layer_in.reshape(len(sizes), batch, layer_in.shape[-1])
            if unbatched:
                out, h_n = out.squeeze(1), h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
            elif self.batch_first:
                out = out.transpose(0, 1)
        return out, ((h_n, c_n) if is_lstm else h_n)

    def _empty_batch(self, steps, features, h0, c0, data):
        """torch's result for a batch of 0 sequences: empty outputs of the right shapes (the
        C time loop needs at least one sequence). They depend on the input, the initial
        state and the weights (through empty slices, so exactly 0), so backward runs and
        gives zero gradients, as torch's."""
        parts = [data, h0] + ([c0] if c0 is not None else []) + [w for w in self._flat_weights if w is not None]
        link = sum(t.reshape(-1).narrow(0, 0, 0).sum() for t in parts)
        out = zeros(steps, 0, features, dtype=data.dtype, device=data.device) + link
        if self.batch_first:
            out = out.transpose(0, 1)
        h_n = h0 + link
        return out, ((h_n, c0 + link) if c0 is not None else h_n)

    def _initial_state(self, hx, is_lstm, unbatched, batch, dirs, real_hidden, data):
        n = self.num_layers * dirs
        if hx is None:
            h0 = zeros(n, batch, real_hidden, dtype=data.dtype, device=data.device)
            c0 = zeros(n, batch, self.hidden_size, dtype=data.dtype, device=data.device) if is_lstm else None
            return h0, c0
        h0, c0 = hx if is_lstm else (hx, None)
        want_h = (n, batch, real_hidden)
        if unbatched:
            if h0.ndim != 2:
                raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got %d-D tensor" % h0.ndim)
            h0 = h0.unsqueeze(1)
            c0 = None if c0 is None else c0.unsqueeze(1)
        if tuple(h0.shape) != want_h:
            raise RuntimeError("Expected hidden size %s, got %s" % (list(want_h), list(h0.shape)))
        if is_lstm and tuple(c0.shape) != (n, batch, self.hidden_size):
            raise RuntimeError("Expected hidden size %s, got %s" % ([n, batch, self.hidden_size], list(c0.shape)))
        return h0, c0

    def extra_repr(self):
        s = "%d, %d" % (self.input_size, self.hidden_size)
        if self.proj_size:
            s += ", proj_size=%d" % self.proj_size
        if self.num_layers != 1:
            s += ", num_layers=%d" % self.num_layers
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += ", dropout=%s" % self.dropout
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _split_args(args, kwargs, names):
    """torch's RNN(*args, **kwargs): positional arguments after the mode's own."""
    for name, v in zip(names, args):
        if name in kwargs:
            raise TypeError("got multiple values for argument %r" % name)
        kwargs[name] = v
    return kwargs


# RNNBase's positional order after the mode (torch passes *args straight through to it)
_ARGS = ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size",
         "device", "dtype"]


class RNN(RNNBase):
    """Elman RNN, h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs):
        kwargs = _split_args(args, kwargs, _ARGS)
        nl = kwargs.pop("nonlinearity", "tanh")
        if nl not in ("tanh", "relu"):
            raise ValueError("Unknown nonlinearity '%s'" % nl)
        super().__init__("RNN_TANH" if nl == "tanh" else "RNN_RELU", **kwargs)
        self.nonlinearity = nl


class LSTM(RNNBase):
    """LSTM with PyTorch's gates (i, f, g, o) and proj_size (weight_hr_l{k}: h = o tanh(c) W_hr^T)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", **_split_args(args, kwargs, _ARGS))


class GRU(RNNBase):
    """GRU with PyTorch's gates (r, z, n): n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", **_split_args(args, kwargs, _ARGS))


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        dtype = dtype or _dtype.float32
        stdv = 1.0 / math.sqrt(hidden_size)
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(uniform((g, input_size), -stdv, stdv, dtype=dtype, device=device))
        self.weight_hh = Parameter(uniform((g, hidden_size), -stdv, stdv, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(uniform((g,), -stdv, stdv, dtype=dtype, device=device))
            self.bias_hh = Parameter(uniform((g,), -stdv, stdv, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def reset_parameters(self):
        from .. import init
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self):
        s = "%d, %d" % (self.input_size, self.hidden_size)
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += ", nonlinearity=%s" % self.nonlinearity
        return s

    def _run(self, mode, input, hx, is_lstm):
        if input.ndim not in (1, 2):
            raise ValueError("%s: Expected input to be 1D or 2D, got %dD instead" % (type(self).__name__, input.ndim))
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        name = type(self).__name__
        if x.shape[1] != self.input_size:
            raise RuntimeError("%s: input has inconsistent input_size: got %d expected %d"
                               % (name, x.shape[1], self.input_size))
        if hx is None:
            z = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            h, c = z, (z if is_lstm else None)
        else:
            h, c = hx if is_lstm else (hx, None)
            if unbatched:
                h = h.unsqueeze(0)
                c = None if c is None else c.unsqueeze(0)
            for k, state in enumerate((h, c) if is_lstm else (h,)):
                self._check_state(k, state, x.shape[0])
        xp = F.linear(x, self.weight_ih, self.bias_ih)
        h2, c2 = _cell(mode, xp, h, c, self.weight_hh, self.bias_hh)
        if unbatched:
            h2 = h2.squeeze(0)
            c2 = None if c2 is None else c2.squeeze(0)
        return (h2, c2) if is_lstm else h2


    def _check_state(self, k, state, batch):
        """hidden k (h, or the LSTM's c for k = 1) is [batch, hidden_size], as torch checks."""
        name = type(self).__name__
        if state.ndim != 2 or state.shape[0] != batch:
            raise RuntimeError("%s: Input batch size %d doesn't match hidden%d batch size %s (hidden%d has shape %s)"
                               % (name, batch, k, state.shape[0] if state.ndim else "none", k, list(state.shape)))
        if state.shape[1] != self.hidden_size:
            raise RuntimeError("%s: hidden%d has inconsistent hidden_size: got %d, expected %d"
                               % (name, k, state.shape[1], self.hidden_size))


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError("Unknown nonlinearity: %s" % nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._run(_TANH if self.nonlinearity == "tanh" else _RELU, input, hx, False)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        return self._run(_LSTM, input, hx, True)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._run(_GRU, input, hx, False)

