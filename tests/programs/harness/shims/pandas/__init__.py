"""A stand-in for pandas (not installed by the project): crossformer's data_loader.py reads its
series with read_csv and uses len(df), df.columns[1:], df[columns], df[a:b] (rows) and
df.values, over NumPy. Columns that parse as numbers are float64, others (the date) object.
Last on sys.path: an installed pandas is used where there is one."""
import csv

import numpy as np


class DataFrame:
    def __init__(self, data, columns):
        self._data = {c: data[c] for c in columns}
        self.columns = list(columns)

    def __len__(self):
        return len(self._data[self.columns[0]]) if self.columns else 0

    def __getitem__(self, key):
        if isinstance(key, slice):  # rows, as pandas does for an integer slice
            return DataFrame({c: v[key] for c, v in self._data.items()}, self.columns)
        if isinstance(key, str):
            return self._data[key]
        return DataFrame(self._data, list(key))

    @property
    def values(self):
        cols = [self._data[c] for c in self.columns]
        if all(c.dtype != object for c in cols):
            return np.stack(cols, axis=1) if cols else np.zeros((0, 0))
        return np.stack([c.astype(object) for c in cols], axis=1)


def _column(cells):
    try:
        return np.array([float(x) for x in cells], dtype=np.float64)
    except ValueError:
        return np.array(cells, dtype=object)


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return DataFrame({name: _column([r[j] for r in body]) for j, name in enumerate(header)}, header)
