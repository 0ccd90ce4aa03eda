import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from './tracing.js';

/**
 * The OpenTelemetry SDK and its OTLP exporter. Imported by tracing.ts only when an endpoint is
 * configured, so a process without tracing never loads any of it.
 */

function samplerOf(settings: TracingSettings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(settings.samplerRatio);
  switch (settings.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

async function exporterOf(settings: TracingSettings & { endpoint: string }): Promise<SpanExporter> {
  // Each protocol's exporter is its own package: only the one in use is loaded.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url: settings.endpoint });
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ url: settings.endpoint });
}

/** Registers the process's tracer provider, context manager (AsyncLocalStorage) and W3C propagator. */
export async function registerTracerProvider(settings: TracingSettings & { endpoint: string; serviceName: string }): Promise<NodeTracerProvider> {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) override our default name.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': settings.serviceName, 'service.namespace': 'merx' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    sampler: samplerOf(settings),
    spanProcessors: [new BatchSpanProcessor(await exporterOf(settings))],
  });
  provider.register();
  const shutdown = provider.shutdown.bind(provider);
  // A later start in the same process (tests) must be able to register its own again.
  provider.shutdown = async () => {
    await shutdown();
    const { context, propagation, trace } = await import('@opentelemetry/api');
    trace.disable();
    context.disable();
    propagation.disable();
  };
  return provider;
}
