# sleepy.py
import time

import expdna

with expdna.track(output_dir="out") as run:
    print("started", run.run_id, flush=True)
    time.sleep(600)
