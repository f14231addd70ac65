"""Reading the traced search's graph: what one decoding step runs.

    for function, node in loop_body_nodes(search):  # the search loop's body
        ...

The search's loop (`tf.while_loop`) is a function in the traced graph's
library, and the functions its nodes call (Keras layers traced as functions,
`tf.cond` branches) are others. `bench/decode_ops.py` counts ops per step with
this; tests check what a step does (no weight cast inside the loop).
"""

from typing import Iterator, Optional, Sequence, Tuple

# Node attributes that name a function the node runs.
_CALLED = ("f", "then_branch", "else_branch", "body", "cond")


def loop_body_nodes(search, branches: Optional[Sequence[str]] = None
                    ) -> Iterator[Tuple[object, object]]:
    """(FunctionDef, NodeDef) of every node in the search loop's body, nested
    functions included.

    Args:
      search: a `t2t_lite.decode.search.Search`, traced here (if not already) for
        any input shape.
      branches: which nested functions to follow (`_CALLED` attributes: the
        default follows all of them, both branches of each `tf.cond`).
    Raises:
      ValueError: the graph does not hold exactly one loop.
    """
    graph_def = search.compiled.get_concrete_function().graph.as_graph_def()
    functions = {f.signature.name: f for f in graph_def.library.function}
    bodies = [node.attr["body"].func.name
              for nodes in [graph_def.node] + [f.node_def for f in functions.values()]
              for node in nodes if node.op in ("While", "StatelessWhile")]
    if len(bodies) != 1:
        raise ValueError(f"Expected one search loop, found {len(bodies)}.")
    follow = _CALLED if branches is None else tuple(branches)

    def walk(name):
        function = functions[name]
        for node in function.node_def:
            yield function, node
            for key in follow:
                if key in node.attr and node.attr[key].func.name in functions:
                    yield from walk(node.attr[key].func.name)

    yield from walk(bodies[0])


def reads_argument(function, node, position: int = 0) -> bool:
    """Whether input `position` of `node` is one of `function`'s own arguments
    (for a loop body: a loop variable or a tensor captured from outside the loop)."""
    arguments = {arg.name for arg in function.signature.input_arg}
    return node.input[position].split(":")[0] in arguments
