# Inputs and golden output of mini_example: y = 1.5 * x + 2 (Muls then Adds, in float32).
import argparse
import os

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("-blocks", type=int, required=True)
blocks = ap.parse_args().blocks
x = np.random.uniform(-4, 4, blocks * 72).astype(np.float32)
os.makedirs("input", exist_ok=True)
os.makedirs("output", exist_ok=True)
x.tofile("input/input_x.bin")
(x * np.float32(1.5) + np.float32(2.0)).astype(np.float32).tofile("output/golden.bin")
