"""Settings for the whole test suite."""

import os

# onnxruntime 1.29+ keeps a device id and a usage database under ~/.cache/Microsoft, and may send
# usage data, when imported: nardy asks it not to (agents.onnx_policy.import_onnxruntime), and so
# do the tests that import it without nardy (examples/frontend.py, which keeps to the bare steps).
if not os.environ.get("ORT_DISABLE_TELEMETRY"):
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
