"""Recording: a manifest checked and split into blobs, a run row and facts (``prepare``,
``storeform``, ``sections``, ``factsets``, ``flatten``), then written blobs first and rows
last, batch by batch (``recorder``, ``write``).
"""
