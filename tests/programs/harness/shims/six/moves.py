import urllib.request  # noqa: F401
import urllib  # noqa: F401
