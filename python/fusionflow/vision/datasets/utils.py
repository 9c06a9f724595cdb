"""Integrity checks, archive extraction and the download helpers of torchvision.datasets.utils.

There is no network here: a "download" succeeds only when the file is already in place (and
verified when an md5 is known); otherwise it raises a RuntimeError that says which file to put
where and the URL torchvision would have fetched it from, so a user can fetch it elsewhere."""
import bz2
import gzip
import hashlib
import lzma
import os
import shutil
import tarfile
import zipfile

__all__ = ["calculate_md5", "check_md5", "check_integrity", "download_url", "download_and_extract_archive",
           "extract_archive", "list_dir", "list_files", "verify_str_arg", "iterable_to_str",
           "offline_error"]


def calculate_md5(fpath, chunk_size=1024 * 1024):
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath, md5, **kwargs):
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath, md5=None):
    """The file exists and, when md5 is given, has that checksum."""
    if not os.path.isfile(fpath):
        return False
    return md5 is None or check_md5(fpath, md5)


def _describe(path, md5):
    """Why `path` does not pass check_integrity, in words."""
    if not os.path.isfile(path):
        return "missing"
    return "present but its md5 is %s, expected %s" % (calculate_md5(path), md5)


def offline_error(who, entries, hint=None):
    """The RuntimeError a download raises here. entries: (local path, url or None, md5 or None)."""
    lines = ["%s: cannot download: fusionflow.vision has no network access. Place the file(s) "
             "yourself and run again:" % who]
    for path, url, md5 in entries:
        line = "  %s (%s)" % (path, _describe(path, md5))
        if url:
            line += "\n      from %s" % url
        if md5:
            line += "  md5 %s" % md5
        lines.append(line)
    if hint:
        lines.append(hint)
    return RuntimeError("\n".join(lines))


def download_url(url, root, filename=None, md5=None, max_redirect_hops=3):
    """torchvision's download_url, offline: a no-op when root/filename is there and verified."""
    root = os.path.expanduser(root)
    fpath = os.path.join(root, filename or os.path.basename(url))
    if check_integrity(fpath, md5):
        print("Using downloaded and verified file: " + fpath)
        return
    raise offline_error("download_url", [(fpath, url, md5)])


def download_and_extract_archive(url, download_root, extract_root=None, filename=None, md5=None,
                                 remove_finished=False):
    """Extracts download_root/filename when it is already there (and verified); else refuses."""
    download_root = os.path.expanduser(download_root)
    filename = filename or os.path.basename(url)
    download_url(url, download_root, filename, md5)
    archive = os.path.join(download_root, filename)
    extract_root = extract_root or download_root
    print("Extracting %s to %s" % (archive, extract_root))
    extract_archive(archive, extract_root, remove_finished)


_TAR_SUFFIXES = {".tar": "", ".tar.gz": "gz", ".tgz": "gz", ".tar.bz2": "bz2", ".tbz": "bz2",
                 ".tbz2": "bz2", ".tar.xz": "xz", ".txz": "xz"}
_COMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def extract_archive(from_path, to_path=None, remove_finished=False):
    """Unpacks a tar / zip archive into to_path (default: beside it), or decompresses a single
    .gz / .bz2 / .xz file there; returns to_path."""
    to_path = to_path or os.path.dirname(from_path)
    name = os.path.basename(from_path).lower()
    tar_suffix = next((s for s in sorted(_TAR_SUFFIXES, key=len, reverse=True) if name.endswith(s)), None)
    if tar_suffix is not None:
        with tarfile.open(from_path, "r:" + _TAR_SUFFIXES[tar_suffix]) as tar:
            if hasattr(tarfile, "data_filter"):  # no absolute paths or '..' out of to_path
                tar.extractall(to_path, filter="data")
            else:
                tar.extractall(to_path)
    elif name.endswith(".zip"):
        with zipfile.ZipFile(from_path) as zf:
            zf.extractall(to_path)
    else:
        suffix = os.path.splitext(name)[1]
        if suffix not in _COMPRESSORS:
            known = sorted(list(_TAR_SUFFIXES) + [".zip"] + list(_COMPRESSORS))
            raise RuntimeError("extract_archive: unknown compression or archive type of '%s'; known "
                               "suffixes are %s" % (from_path, ", ".join(known)))
        target = os.path.join(to_path, os.path.basename(from_path)[:-len(suffix)])
        with _COMPRESSORS[suffix](from_path, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    if remove_finished:
        os.remove(from_path)
    return to_path


def list_dir(root, prefix=False):
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root, suffix, prefix=False):
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)]
    return [os.path.join(root, d) for d in names] if prefix else names


def iterable_to_str(iterable):
    return "'" + "', '".join(str(item) for item in iterable) + "'"


def verify_str_arg(value, arg=None, valid_values=None, custom_msg=None):
    """value, when it is a str among valid_values; ValueError (as torchvision) otherwise."""
    if not isinstance(value, str):
        what = "" if arg is None else " for argument %s" % arg
        raise ValueError("Expected type str%s, but got type %s." % (what, type(value)))
    if valid_values is None or value in valid_values:
        return value
    raise ValueError(custom_msg or "Unknown value '%s' for argument %s. Valid values are {%s}."
                     % (value, arg, iterable_to_str(valid_values)))
