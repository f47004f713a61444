"""What GPU workloads and collection share: the CUDA preamble, environment checks, the neutrino CLI runner and
the context every section collector gets."""
