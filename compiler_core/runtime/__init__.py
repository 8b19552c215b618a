"""Turning generated source into callables: host C via the system compiler, CUDA via pycuda."""
