// placeholder: written by the foundation work (see ops.h)
