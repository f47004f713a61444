"""Running the suite: the one section runner (collection step, analysis, cache), the notebook facade,
sections computed ahead, headless papermill runs, output locks."""
