"""Training integrations: the two-phase hook around ``ray.init``, checkpoint names.

Importing this package imports no torch, Ray, pyarrow or SQLAlchemy: Ray is imported only
by :meth:`RunHandle.add_runtime` when the training script has initialised it, the store
only when a run is recorded in one.
"""

from expdna.integrations.checkpoints import checkpoint_name
from expdna.integrations.hook import RunHandle, Tracking, start, track

__all__ = ["RunHandle", "Tracking", "checkpoint_name", "start", "track"]
