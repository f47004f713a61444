"""Paper result folder: analysis (importable + CLI) and the GPU workloads the dynamic notebook profiles."""
