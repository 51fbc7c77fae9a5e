"""What a file is, from its name and first bytes (magic numbers); TFRecord by its framing,
whose CRC-32C is verified, so a TFRecord is told whatever its file name."""

from __future__ import annotations

import struct

HEAD_BYTES = 265  # enough for the tar "ustar" signature at offset 257

_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"\x93NUMPY", "npy"),
    (b"PK\x03\x04", "npz"),
    (b"PAR1", "parquet"),
)
_BMP_HEADER_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})


def magic_kind(name: str, head: bytes) -> str:
    """The format told by a file's name (LMDB's data.mdb) and first bytes (up to 265)."""
    if name == "data.mdb":
        return "lmdb"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if is_tfrecord_head(head):
        return "tfrecord"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    for prefix, kind in _PREFIXES:
        if head.startswith(prefix):
            return kind
    # "BM" alone is too weak (text can start with it): the DIB header size must be known
    if head[:2] == b"BM" and len(head) >= 18 and _u32(head, 14) in _BMP_HEADER_SIZES:
        return "bmp"
    return "unknown"


def is_tfrecord_head(head: bytes) -> bool:
    """TFRecord framing: uint64 little-endian length, then the masked CRC32C of those
    8 bytes. The CRC is verified, so any file name qualifies."""
    if len(head) < 12:
        return False
    return _u32(head, 8) == masked_crc32c(head[:8])


def _u32(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from("<I", data, offset)[0]
    return value


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord uses; table-driven, for short inputs."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
