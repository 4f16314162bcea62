"""Masked CRC32C as TFRecord uses it (tsl/lib/hash/crc32c.h), on google-crc32c's C function.

The mask exists because CRCs of data that embeds CRCs are weak; TFRecord stores
``rot_right(crc, 15) + 0xa282ead8`` for both the length and the data checksum.
"""
from __future__ import annotations

from google_crc32c import value as crc32c  # the C extension's value(); bytes only, no memoryview

__all__ = ["crc32c", "masked_crc", "mask", "unmask", "MASK_DELTA", "U32_MASK"]

MASK_DELTA = 0xA282EAD8  # the readers' and writers' hot loops inline the mask with these two
U32_MASK = 0xFFFFFFFF


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & U32_MASK) + MASK_DELTA) & U32_MASK


def unmask(masked: int) -> int:
    rot = (masked - MASK_DELTA) & U32_MASK
    return ((rot >> 17) | (rot << 15)) & U32_MASK


def masked_crc(data: bytes) -> int:
    """The checksum TFRecord writes after ``data``."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & U32_MASK) + MASK_DELTA) & U32_MASK
