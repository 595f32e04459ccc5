#!/usr/bin/env bash
# Sets up .venv and runs the main job: constrained decoding over the real Gemma 3 vocabulary, first with the
# host API, then inside jax.jit (the grammar step as an XLA custom call in a lax.while_loop).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "tokenizers,vocabs,flax"
python examples/constrained_demo.py
python examples/jax_demo.py "$@"
