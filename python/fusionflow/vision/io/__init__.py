"""torchvision.io's image part: read_image, decode_png / decode_jpeg / decode_image, encode_png /
encode_jpeg, write_png / write_jpeg, read_file / write_file, ImageReadMode (through PIL).
The video functions are not offered."""
from .image import (ImageReadMode, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png, read_file,
                    read_image, write_file, write_jpeg, write_png)

__all__ = ["ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "read_file",
           "read_image", "write_file", "write_jpeg", "write_png"]
