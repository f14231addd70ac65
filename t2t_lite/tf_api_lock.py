"""One lock around TensorFlow's Python API for programs that translate on several threads.

TensorFlow's public ops (`tf.cast`, `tf.equal`, `tf.strings...`) go through a
dispatcher (`PythonAPIDispatcher`) that writes each call's arguments into one
buffer per op, shared by every thread: when the interpreter switches threads
inside that call, another thread's call overwrites the buffer and the first one
reads freed objects (a SIGSEGV, seen in t2t-decoder's parallel batches). A
compiled `tf.function` called with tensors does not go through it, so threads
may run compiled searches at once; everything else a translating thread does
with TensorFlow (encoding, padding, detokenizing, reading results) holds
`TF_API_LOCK`. t2t-decoder, t2t-server's batch workers and its request threads
share it.
"""

import threading

TF_API_LOCK = threading.RLock()
