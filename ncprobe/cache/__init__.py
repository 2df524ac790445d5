"""The embedding cache: pooled vectors on disk, per model fingerprint, never computed twice.

The root is ``$NCPROBE_CACHE`` when set, else ``platformdirs.user_cache_dir("ncprobe")/embeddings``
(:func:`ncprobe._io.cache_root`). It holds one store *entry* per encoder fingerprint, and
``file-sha256.json``, the digests of model weight files that fingerprints hash
(:func:`ncprobe._io.hash_cache`, which encoders use without importing this package).

One module per job:

* :mod:`~ncprobe.cache.store`: :class:`~ncprobe.cache.store.EmbeddingStore` (look up,
  store, read back one layer view at a time: :class:`~ncprobe.cache.store.StoredVectors`)
  and the item keys;
* :mod:`~ncprobe.cache.shards`: a shard's byte layout (views first), writing, reading its
  headers and rows, CRC checks;
* :mod:`~ncprobe.cache.dtypes`: storage dtypes (float32, float16, bfloat16) and what
  storing in them costs;
* :mod:`~ncprobe.cache.shapes`: the shape of an entry's vectors, and which shards fit it;
* :mod:`~ncprobe.cache.entries`: the names on disk: entries, fingerprint ids, which files
  are ncprobe's (the marker and temporary names are :mod:`ncprobe.owned`'s);
* :mod:`~ncprobe.cache.maintenance`: ``cache info`` and ``cache clear``.

Shards that a development version of ncprobe wrote (vectors items first, without a
``layout`` array; half precision without its ``loss``) are never read: ``cache info`` names
them as written by a development version of ncprobe, and a run deletes them and encodes
their items again, as it does with a damaged shard.

Below are the names other code uses; modules of ncprobe import each from the module that
owns it.
"""

from .dtypes import (
    COSINE_BOUND,
    STORE_DTYPES,
    check_store_dtype,
    decode_vectors,
    encode_vectors,
    storage_loss,
)
from .entries import fingerprint_id
from .maintenance import cache_clear, cache_info, check_entry, scan
from .shapes import vector_shape
from .store import EmbeddingStore, StoredVectors, item_key

__all__ = ["COSINE_BOUND", "STORE_DTYPES", "EmbeddingStore", "StoredVectors", "cache_clear",
           "cache_info", "check_entry", "check_store_dtype", "decode_vectors",
           "encode_vectors", "fingerprint_id", "item_key", "scan", "storage_loss",
           "vector_shape"]
