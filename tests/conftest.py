"""Settings for the whole test suite."""

import os

# onnxruntime 1.29+ keeps a device id and a usage database under ~/.cache/Microsoft, and may send
# usage data, when imported: nardy asks it not to (agents.onnx_policy.import_onnxruntime), and so
# do the tests, some of which import it directly.
if not os.environ.get("ORT_DISABLE_TELEMETRY"):
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"

# Output checks are written for the usual 80 columns with progress shown, as on a machine that sets
# neither: a developer's or CI's own COLUMNS or TQDM_DISABLE would change what the commands print
# (a test that wants another width, or no progress, sets it itself).
os.environ["COLUMNS"] = "80"
os.environ.pop("TQDM_DISABLE", None)
