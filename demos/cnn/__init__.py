"""Chapter 5: the TensorFlow tutorial CNN on CIFAR-10, written in Keras 3.

The model is written against ``keras`` alone (no ``tf.*`` calls), so the same
code trains on TensorFlow (the course default), and on JAX or PyTorch
(``KERAS_BACKEND=jax``) on machines where TensorFlow is not installed.
Modules: ``model`` (the network), ``data`` (CIFAR-10 and offline fallbacks),
``train`` (fit/evaluate with options that make a GPU fast), ``bench``
(images/s per device), ``plots`` (the bar chart).
"""

# Keras dtype policies the course uses (here so the CLI can check them without importing Keras).
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
