# Checks mini_example's outputs: y against the golden file, and the core identities the mix kernel recorded
# (1:2 mix with 3 blocks: AIV i writes i * 100 + i % 2, AIC b writes 1000 + b; the AIV_ONLY kernel writes 4242).
import sys

import numpy as np

out, golden = (np.fromfile(p, dtype=np.float32) for p in sys.argv[1:3])
ids = np.fromfile("output/ids.bin", dtype=np.int32)[::16]  # one 64-byte slot per core
expected = np.array([i * 100 + i % 2 for i in range(6)] + [1000, 1001, 1002, 4242], dtype=np.int32)
ok = out.shape == golden.shape and np.allclose(out, golden, rtol=1e-6, atol=1e-6) and np.array_equal(ids, expected)
print("test pass!" if ok else f"mismatch: y max err {np.abs(out - golden).max()}, ids {ids.tolist()}")
sys.exit(0 if ok else 1)
