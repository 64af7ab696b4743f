"""``expdna explain``: which recorded facts go with a metric, or with failing, across the
runs of one setup. The statistics need SciPy (``pip install 'expdna[explain]'``), which only
this command imports: :mod:`expdna.explain.association` and :mod:`expdna.explain.report`.
"""
