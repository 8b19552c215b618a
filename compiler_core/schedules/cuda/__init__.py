"""CUDA schedule templates, keyed by op name."""
from compiler_core.schedules.cuda import elementwise

TEMPLATES = {
    "elementwise": elementwise,
}
