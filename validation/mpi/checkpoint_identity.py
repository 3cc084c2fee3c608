"""The identity checksum of a Headroom checkpoint (docs/formats.md), for tools that edit its
config_ini, lineage or tokenizer_id attributes with h5py: after the edit, refresh(f) writes the
checksum those attributes now have, or the checkpoint reads as corrupted.

    import h5py, checkpoint_identity
    with h5py.File(path, "r+") as f:
        f["config"].attrs["config_ini"] = edited
        checkpoint_identity.refresh(f)
"""
import numpy as np


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def identity_checksum(f):
    """The byte sum of config_ini, lineage and tokenizer_id (NUL-separated) read as little-endian
    32-bit words, a short tail zero-padded, as the int64 the checkpoint stores (uint64, wrapping)."""
    data = "\0".join(_text(v) for v in (f["config"].attrs["config_ini"], f.attrs["lineage"],
                                         f["config"].attrs["tokenizer_id"])).encode()
    data += b"\0" * (-len(data) % 4)
    total = int(np.frombuffer(data, dtype="<u4").astype(np.uint64).sum(dtype=np.uint64))
    return np.int64(total - (1 << 64) if total >= 1 << 63 else total)


def refresh(f):
    """Rewrites identity_checksum after an edit; checkpoints written before it existed stay without."""
    if "identity_checksum" in f.attrs:
        f.attrs["identity_checksum"] = identity_checksum(f)
