"""torch.utils.tensorboard needs the tensorboard package, which neither side has (Debian's
python3-torch does not pull it in); makemore imports its SummaryWriter only to log the
evaluation losses it also prints. The driver puts this module in that name's place on both
sides (programs.py `modules`): a writer that keeps the scalars in memory and writes no files."""


class SummaryWriter:
    def __init__(self, log_dir=None, *args, **kwargs):
        self.log_dir = log_dir
        self.scalars = []

    def add_scalar(self, tag, value, step=None, *args, **kwargs):
        self.scalars.append((tag, float(value), step))

    def flush(self):
        pass

    def close(self):
        pass
