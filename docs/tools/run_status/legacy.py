# legacy.py
import json
import os
import sys

print("training without expdna")
with open(os.environ["EXPDNA_METRICS_FILE"], "w") as f:
    json.dump({"val_loss": 1.25}, f)
sys.exit(3)
