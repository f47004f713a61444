"""Running the suite: the section registry, the notebook facade, collection and the papermill runner."""
