"""What a learner's graded functions may use of attncore, per assignment: nothing else.

During graded calls the worker trips every attncore function (public or private, of every
module) but these and what they call (observe.seal_library), so an exercise forbids what
computes its answer, whatever its name: in 02-simplex not only softmax and log_softmax but
exp(x - logsumexp(x)), the private core of the library's softmax and flash.tile_state.
The names are attncore's ("softmax", "invariants.default_atol"), "module.*" for a whole
module; each notebook's Rules say the same in words.
"""
ALLOWED = {
    "01-convention": ("softmax",),  # "You may call attncore.softmax"
    "02-simplex": ("invariants.default_atol",),  # the tolerance the exercise points to
    "03-masking": (),  # NumPy only
    "04-heads": ("softmax",),
    "05-flash": (),
    "06-variants": ("feature_maps.*",),  # the feature maps linear_attention is given
    "07-real-model": ("softmax", "bert.linear"),
}
