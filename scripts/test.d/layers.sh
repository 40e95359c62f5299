#!/usr/bin/env bash
# The engine's modules depend downward: no import circle between them (docs/ARCHITECTURE.md,
# "Crates and layers").
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/module_cycles.py
