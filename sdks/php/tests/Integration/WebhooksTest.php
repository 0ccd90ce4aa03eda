<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Core\Model;
use Merx\Events\EventTypes;
use Merx\Exception\WebhookVerificationError;
use Merx\Merx;
use Merx\Tests\Support\IntegrationTestCase;
use Merx\Tests\Support\Processes;
use Merx\Tests\Support\Receiver;
use Merx\Tests\Support\Stack;
use Merx\Webhook;
use Merx\WebhookEvent;

/** Webhook verification of real deliveries from the server. */
final class WebhooksTest extends IntegrationTestCase
{
    /** @var list<Receiver> */
    private array $receivers = [];

    private string $file;

    protected function setUp(): void
    {
        parent::setUp();
        $this->file = tempnam(sys_get_temp_dir(), 'merx-webhooks');
    }

    protected function tearDown(): void
    {
        foreach ($this->receivers as $receiver) {
            $receiver->stop();
        }
        @unlink($this->file);
        parent::tearDown();
    }

    public function testTheReceiverExampleVerifiesARealDeliveryAndRefusesAForgedOne(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $port = Processes::freePort();
        $subscription = $merx->webhooks->subscriptions->create(['url' => "http://127.0.0.1:{$port}/", 'topics' => ['products.created']]);
        self::assertStringStartsWith('whsec_', $subscription->secret);
        $receiver = $this->receiver(Stack::repoRoot() . '/examples/php-webhook-receiver/public/index.php', ['MERX_WEBHOOK_SECRET' => $subscription->secret, 'MERX_WEBHOOK_EVENTS' => $this->file], $port);

        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Delivered', 'price' => '4.00', 'currency' => 'USD']);

        $event = Processes::eventually(fn (): ?array => $this->lines()[0] ?? null, 30, 'the receiver verifying the delivery');
        self::assertSame('products.created', $event['topic']);
        self::assertSame($product->id, $event['object_id']);
        self::assertSame(EventTypes::CLASSES['products.created'] ?? WebhookEvent::class, $event['class']);

        $forged = Webhook::sign(['id' => 'evt_forged', 'topic' => 'products.created', 'data' => ['object' => []]], 'whsec_' . base64_encode(random_bytes(32)));
        self::assertSame(400, $receiver->post($forged['body'], $forged['headers']));
        self::assertSame(400, $receiver->post('{}', []));
        self::assertCount(1, $this->lines());
    }

    public function testVerifyReturnsTheTypedEventAndRefusesAnythingAltered(): void
    {
        [$merx, $subscription] = $this->captured();
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Signed', 'price' => '4.00', 'currency' => 'USD']);
        ['headers' => $headers, 'body' => $body] = $this->delivery($product->id);

        $event = Webhook::verify($body, $headers, $subscription->secret);

        self::assertInstanceOf(Model::class, $event);
        self::assertInstanceOf(EventTypes::CLASSES['products.created'] ?? WebhookEvent::class, $event);
        self::assertSame('products.created', $event['topic']);
        self::assertSame($headers['Webhook-Id'] ?? $headers['webhook-id'], $event['id']);
        self::assertSame($product->id, $event['data']['object']['id']);
        // Typed all the way down once the document has a `webhooks` section (ProductsCreatedEvent → Product).
        self::assertSame($product->id, $event instanceof WebhookEvent ? $event->data['object']['id'] : $event->data->object->id);
        $timestamp = (int) ($headers['Webhook-Timestamp'] ?? $headers['webhook-timestamp']);

        $this->assertRefused('signature', fn () => Webhook::verify(str_replace('"Signed"', '"Forged"', $body), $headers, $subscription->secret));
        $this->assertRefused('signature', fn () => Webhook::verify($body, $headers, 'whsec_' . base64_encode(random_bytes(32))));
        $this->assertRefused('old', fn () => Webhook::verify($body, $headers, $subscription->secret, now: $timestamp + Webhook::TOLERANCE_SECONDS + 1));
        $this->assertRefused('future', fn () => Webhook::verify($body, $headers, $subscription->secret, now: $timestamp - Webhook::TOLERANCE_SECONDS - 1));
        self::assertInstanceOf(Model::class, Webhook::verify($body, $headers, $subscription->secret, now: $timestamp + Webhook::TOLERANCE_SECONDS));
        $withoutId = array_filter($headers, static fn (string $name): bool => strtolower($name) !== 'webhook-id', \ARRAY_FILTER_USE_KEY);
        $this->assertRefused('webhook-id', fn () => Webhook::verify($body, $withoutId, $subscription->secret));
        // Headers re-signed over a body whose hmac_sha256 is wrong: the body check alone catches it.
        $rehmacked = preg_replace('/"hmac_sha256":"[0-9a-f]+"/', '"hmac_sha256":"' . str_repeat('0', 64) . '"', $body);
        $resigned = Webhook::sign((string) $rehmacked, $subscription->secret);
        $this->assertRefused('hmac_sha256', fn () => Webhook::verify($resigned['body'], $resigned['headers'], $subscription->secret));
        self::assertSame($product->id, Webhook::verifySignature($resigned['body'], $resigned['headers'], $subscription->secret)['data']['object']['id']);
    }

    public function testDuringARotationBothSecretsSign(): void
    {
        [$merx, $subscription] = $this->captured();
        $rotated = $merx->webhooks->subscriptions->rotateSecret($subscription->id);
        self::assertNotSame($subscription->secret, $rotated->secret);
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Rotated', 'price' => '4.00', 'currency' => 'USD']);
        ['headers' => $headers, 'body' => $body] = $this->delivery($product->id);

        $signatures = explode(' ', $headers['Webhook-Signature'] ?? $headers['webhook-signature']);
        self::assertCount(2, $signatures);
        self::assertSame($product->id, Webhook::verify($body, $headers, $rotated->secret)['data']['object']['id']);
        self::assertSame($product->id, Webhook::verify($body, $headers, [$subscription->secret, $rotated->secret])['data']['object']['id']);
        self::assertSame($product->id, Webhook::verifySignature($body, $headers, $subscription->secret)['data']['object']['id'], 'the old secret still signs the headers');
        // The server computes the body's hmac_sha256 with the newest secret only (README, Webhooks).
        $this->assertRefused('hmac_sha256', fn () => Webhook::verify($body, $headers, $subscription->secret));
    }

    /** @return array{0: Merx, 1: \Merx\Models\WebhookSubscriptionWithSecret} */
    private function captured(): array
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $port = Processes::freePort();
        $subscription = $merx->webhooks->subscriptions->create(['url' => "http://127.0.0.1:{$port}/", 'topics' => ['products']]);
        $this->receiver(\dirname(__DIR__) . '/Support/capture-receiver.php', ['CAPTURE_FILE' => $this->file], $port);

        return [$merx, $subscription];
    }

    /** @return array{headers: array<string, string>, body: string} the captured delivery of the event about this object */
    private function delivery(string $objectId): array
    {
        return Processes::eventually(function () use ($objectId): ?array {
            foreach ($this->lines() as $request) {
                if (str_contains($request['body'], "\"{$objectId}\"")) {
                    return $request;
                }
            }

            return null;
        }, 30, "the delivery about {$objectId}");
    }

    /** @return list<array<string, mixed>> */
    private function lines(): array
    {
        $lines = array_filter(explode("\n", (string) file_get_contents($this->file)));

        return array_values(array_map(static fn (string $line): array => json_decode($line, true, 512, \JSON_THROW_ON_ERROR), $lines));
    }

    /** @param array<string, string> $env */
    private function receiver(string $script, array $env, int $port): Receiver
    {
        return $this->receivers[] = new Receiver($script, $env, $port);
    }

    private function assertRefused(string $reason, callable $verify): void
    {
        try {
            $verify();
            self::fail("expected a WebhookVerificationError ({$reason})");
        } catch (WebhookVerificationError $e) {
            self::assertStringContainsString($reason, $e->getMessage());
        }
    }
}
