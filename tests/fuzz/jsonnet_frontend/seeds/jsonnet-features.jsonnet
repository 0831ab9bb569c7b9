// Jsonnet features a spec may use: locals, functions, comprehensions, the trainc stdlib, errors.
local t = import 'trainc.libsonnet';
local pools = { ['pool-%d' % i]: t.gpuPool('n1-standard-4', 'nvidia-tesla-t4', 1, nodes=i + 1) for i in std.range(0, 2) };
t.system(
  'features',
  gcp=t.gcp('my-project', 'us-central1', zone='us-central1-c'),
  cluster='demo',
  pools=pools,
  pipeline=[
    t.torchrun('train', 'python:3.12', 'train.py', pool='pool-0', nodes=1) + { args: std.split('a,b', ',') },
  ],
) + { 'quoted-key': if std.length(pools) > 2 then null else error 'too few pools' }
