// Seed 002 in Jsonnet: the same document as spec.yaml, written with the stdlib helpers.
local t = import 'trainc.libsonnet';

t.system(
  'mnist',
  gcp=t.gcp('my-project', 'us-central1', zone='us-central1-c') + { state: { bucket: 'my-project-tf-state' } },
  cluster='demo',
  pools={ 'gpu-pool': t.gpuPool('n1-standard-4', 'nvidia-tesla-t4', 1, nodes=4) },
  pipeline=[
    t.torchrun('train',
               null,
               'mnist.py',
               args=['--epochs=1', '--log-interval=1'],
               port=3389,
               pool='gpu-pool',
               nodes=4,
               env={ LOGLEVEL: 'INFO' })
    // The image is built from image/Dockerfile: no prebuilt 'image'.
    + { image:: null, build: { context: 'image', dockerfile: 'Dockerfile' } },
  ],
)
