"""Python object lifetime drives the C refcounts: thousands of tensors, views, gradients
and DLPack exchanges, and the live-tensor counter comes back to its baseline."""
import gc

import numpy as np
import pytest

import fusionflow as ff

N = 10000


def test_many_tensors_views_grads(live_counter):
    for i in range(N):
        t = ff.full((4, 3), float(i))
        v = t.T[1:, ::2]
        s = v[0]
        w = ff.ones(3, requires_grad=True)
        loss = (w * t[0] + s.sum()).sum()
        loss.backward()
        g = w.grad
        assert g is not None
        del t, v, s, w, loss, g
    gc.collect()


@pytest.mark.requires_host_memory
def test_many_dlpack_exchanges(live_counter):
    a = np.arange(6, dtype=np.float32)
    for i in range(N):
        t = ff.arange(6, dtype=ff.float32)
        n = np.from_dlpack(t[::2])  # FusionFlow -> NumPy
        u = ff.from_dlpack(a)  # NumPy -> FusionFlow
        caps = t.__dlpack__()  # never consumed: its destructor frees it
        back = ff.from_dlpack(t.__dlpack__())  # consumed by us
        assert n[1] == 2 and u[1].item() == 1 and back.data_ptr() == t.data_ptr()
        del t, n, u, caps, back
    gc.collect()


def test_graph_is_freed_with_its_output(live_counter):
    x = ff.randn(16, 16, seed=0, requires_grad=True)
    for _ in range(1000):
        y = (x @ x).tanh().mean()  # never backpropagated: the graph dies with y
        del y
    gc.collect()
    del x


def test_module_and_optimizer_cycles(live_counter):
    for _ in range(200):
        model = ff.nn.Sequential(ff.nn.Linear(4, 8), ff.nn.ReLU(), ff.nn.Linear(8, 1))
        opt = ff.optim.Adam(model.parameters(), lr=1e-2)
        x = ff.randn(5, 4)
        loss = ff.nn.MSELoss()(model(x), ff.zeros(5, 1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        del model, opt, x, loss
    gc.collect()
