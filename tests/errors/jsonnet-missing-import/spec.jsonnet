local common = import 'common.libsonnet';
{
  apiVersion: 'trainc/v1',
  kind: 'TrainingSystem',
  name: 'mnist',
  pipeline: [common.train],
}
