// Two steps: a CPU step writes tokenized shards to S3, then 2 nodes x 8 H100 train on them.
local t = import 'trainc.libsonnet';

local bucket = 'acme-llm-data';
local image = 'us-docker.pkg.dev/acme/llm/trainer:1.4';
local run = 'run-042';
local hparams = { lr: '3e-4', batch: 512, steps: 20000 };

// --key=value flags from an object, in sorted key order.
local flags(o) = ['--%s=%s' % [k, o[k]] for k in std.objectFields(o)];

t.system(
  'prep-and-train',
  pools={
    cpu: t.pool('n2-standard-16'),
    h100: t.gpuPool('a3-highgpu-8g', 'nvidia-h100-80gb', 8, nodes=2),
  },
  storage={ data: t.s3(bucket, prefix='llm') },
  pipeline=[
    t.command('prepare', image, ['python', 'prepare.py', '--out', 'shards'], pool='cpu') + {
      outputs: t.outputs('shards', t.store('data', 'shards/')),
    },
    t.torchrun('train',
               image,
               'train.py',
               flags(hparams) + ['--data', 'shards', '--out', 'out'],
               pool='h100',
               nodes=2,
               needs=['prepare']) + {
      inputs: [t.input(t.store('data', 'shards/'), 'shards')],
      outputs: t.outputs('out', t.store('data', 'runs/%s/' % run)),
      // train.py saves every 2h of training; `trainc plan` shows what that interval costs.
      checkpoints: t.checkpoints('out/ckpt', '*.pt', resumeFlag='--resume', every='2h'),
      timeout: '2d',
    },
  ],
)
