"""Random number generation: RandomUniform(Like), RandomNormal(Like), Multinomial.

Per element: uniform 3 (draw, scale, shift), normal (Box-Muller) 4 vector + 2 transcendentals.
Multinomial: exp of every logit, a running sum (1 per class) and per sample a draw plus a binary
search (``1 + lg(classes)``).
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import lg, output

UNIFORM = (3, 0)
NORMAL = (4, 2)


def _random(cost):
    v, t = cost

    def rule(ins, outs, ctx):
        n = output(outs).numel()
        return Work(vector_flops=v * n, transcendentals=t * n)

    return rule


register("RandomUniform")(_random(UNIFORM))
register("RandomNormal")(_random(NORMAL))
register("RandomUniformLike")(_random(UNIFORM))
register("RandomNormalLike")(_random(NORMAL))


@register("Multinomial")
def multinomial(ins, outs, ctx, *, sample_size=1):
    batch, classes = ins[0].dims()
    logits = batch * classes
    return Work(vector_flops=logits + batch * sample_size * (1 + lg(classes)), transcendentals=logits)
