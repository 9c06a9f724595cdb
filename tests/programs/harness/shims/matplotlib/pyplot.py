"""matplotlib.pyplot's drawing calls as no-ops (figures are not part of the check)."""


def _ignore(*args, **kwargs):
    return None


figure = subplot = subplots = scatter = plot = imshow = hist = xlim = ylim = axis = title = _ignore
xlabel = ylabel = legend = tight_layout = savefig = show = close = colorbar = grid = _ignore
