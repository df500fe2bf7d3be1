"""One graph at many dim assignments (``CostModel.score_dims``): ``polynomial`` fits the counts
as exact polynomials in the dims and verifies them against exact analyses, ``evaluation``
evaluates the fitted kernels over a whole batch of assignments in jitted chunks."""
