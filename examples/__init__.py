"""Examples of ucudnn in use; a package so that tools and tests name them `examples.*`."""
