local t = import 'trainc.libsonnet';

local hp = { epochs: 1 };

t.system(
  'mnist',
  pools={ 'gpu-pool': t.gpuPool('n1-standard-4', 'nvidia-tesla-t4', 1, nodes=4) },
  pipeline=[
    t.torchrun('train', 'gcr.io/my-project/pytorch-mnist-gpu:latest', 'mnist.py',
               args=['--epochs=%d' % hp.epochs], pool='gpu-pool', nodes=4)
    + { imagePullPolicy: 'Always' retries: 0 },
  ],
)
