"""``expdna ui``: a read-only web view over the store (Starlette, Jinja2, uvicorn).

Needs the ``ui`` extra (``pip install 'expdna[ui]'``). Nothing here is imported by
``import expdna`` or by any other command. :func:`expdna.ui.app.create_app` builds the ASGI
app; :mod:`expdna.cli.ui` serves it.
"""
