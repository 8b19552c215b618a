"""CPU (C + OpenMP) schedule templates, keyed by op name."""
from compiler_core.schedules.cpu import elementwise

TEMPLATES = {
    "elementwise": elementwise,
}
