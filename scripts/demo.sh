#!/usr/bin/env bash
# Sets up .venv and runs the main job (the constrained-decoding demo over a real vocabulary).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "tokenizers,vocabs"
python examples/constrained_demo.py "$@"
