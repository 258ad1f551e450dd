// removed once the module has real sources
