"""The object directory: blobs by BLAKE3 digest (``directory``) and the helper process
that writes a batch's blobs while the recorder checks the next (``blobwriter``).

Kept empty: the blob-writing helper loads ``directory`` without importing the rest of
the store.
"""
