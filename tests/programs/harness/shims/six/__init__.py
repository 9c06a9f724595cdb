"""A stand-in for six where it is not installed: super_resolution imports six.moves.urllib
(only to download BSDS300, which the driver writes beforehand)."""
