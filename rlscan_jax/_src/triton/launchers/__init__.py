"""Host launchers: one module per estimator, each with

    forward(x, p, *, axis, reverse, out_dtype, store_h) -> (outputs, h or None)

mapping the inputs to one fused kernel launch (or three for long rows split across programs).
`h` is the fp32 scan state, returned when store_h is set and it differs from the first output.
"""
