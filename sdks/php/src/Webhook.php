<?php

declare(strict_types=1);

namespace Merx;

use Merx\Core\CanonicalJson;
use Merx\Core\Json;
use Merx\Core\Model;
use Merx\Events\EventTypes;
use Merx\Exception\ConfigurationError;
use Merx\Exception\WebhookVerificationError;
use Psr\Http\Message\MessageInterface;

/**
 * Verifies webhook requests from Merx; needs no API key.
 *
 *     $event = Merx\Webhook::verify(file_get_contents('php://input'), getallheaders(), $secret);
 *
 * Two signatures protect each request, both keyed with the bytes of the `whsec_` secret (base64
 * after the prefix): the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature` = `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per secret
 * during a rotation) and the body's `hmac_sha256` (hex HMAC-SHA256 of the other fields as RFC 8785
 * canonical JSON, which survives re-serialisation).
 */
final class Webhook
{
    /** Seconds a request's timestamp may differ from now: older ones are replays, newer ones clock skew. */
    public const TOLERANCE_SECONDS = 300;

    private const SECRET_PREFIX = 'whsec_';

    /**
     * Checks the signature headers, the timestamp and the body's hmac_sha256, and returns the
     * typed event (the generated class of its topic, or WebhookEvent for a topic newer than this SDK).
     *
     * @param string $payload the raw request body, exactly as received
     * @param array<string, string|list<string>>|MessageInterface $headers the request's headers (any case) or the PSR-7 request
     * @param string|list<string> $secret the subscription's `whsec_` secret; during a rotation, both
     *
     * @throws WebhookVerificationError
     */
    public static function verify(string $payload, array|MessageInterface $headers, string|array $secret, int $tolerance = self::TOLERANCE_SECONDS, ?int $now = null): Model
    {
        $keys = self::keys($secret);
        self::verifySignature($payload, $headers, $secret, $tolerance, $now);
        $body = json_decode($payload, false);
        if (!$body instanceof \stdClass) {
            throw new WebhookVerificationError('The body is not a JSON object');
        }
        $claimed = $body->hmac_sha256 ?? null;
        if (!\is_string($claimed)) {
            throw new WebhookVerificationError('The body has no hmac_sha256');
        }
        unset($body->hmac_sha256);
        $canonical = CanonicalJson::encode($body);
        $matches = array_filter($keys, static fn (string $key): bool => hash_equals(hash_hmac('sha256', $canonical, $key), strtolower($claimed)));
        if ($matches === []) {
            throw new WebhookVerificationError('The body\'s hmac_sha256 matches none of the secrets');
        }
        /** @var array<string, mixed> $event */
        $event = json_decode($payload, true);
        $topic = \is_string($event['topic'] ?? null) ? $event['topic'] : '';
        $class = EventTypes::CLASSES[$topic] ?? WebhookEvent::class;

        return $class::from($event);
    }

    /**
     * The Standard Webhooks check alone: headers and timestamp, for bodies without hmac_sha256
     * (an `http` destination receives the routed record alone). Returns the decoded body.
     *
     * @param array<string, string|list<string>>|MessageInterface $headers
     * @param string|list<string> $secret
     *
     * @throws WebhookVerificationError
     */
    public static function verifySignature(string $payload, array|MessageInterface $headers, string|array $secret, int $tolerance = self::TOLERANCE_SECONDS, ?int $now = null): mixed
    {
        $keys = self::keys($secret);
        $id = self::header($headers, 'webhook-id');
        $timestamp = self::header($headers, 'webhook-timestamp');
        $signatures = self::header($headers, 'webhook-signature');
        if (!ctype_digit($timestamp)) {
            throw new WebhookVerificationError('webhook-timestamp is not a unix time');
        }
        $age = ($now ?? time()) - (int) $timestamp;
        if ($age > $tolerance) {
            throw new WebhookVerificationError("The request is {$age} s old, beyond the {$tolerance} s tolerance");
        }
        if ($age < -$tolerance) {
            throw new WebhookVerificationError('The request is timestamped in the future, beyond the tolerance');
        }
        $signed = "{$id}.{$timestamp}.{$payload}";
        foreach ($keys as $key) {
            $expected = base64_encode(hash_hmac('sha256', $signed, $key, true));
            foreach (preg_split('/\s+/', trim($signatures)) ?: [] as $signature) {
                [$version, $value] = array_pad(explode(',', $signature, 2), 2, '');
                if ($version === 'v1' && hash_equals($expected, $value)) {
                    return json_decode($payload, true);
                }
            }
        }
        throw new WebhookVerificationError('No signature in webhook-signature matches the secret');
    }

    /**
     * Signs a payload as Merx does, for testing a receiver: the Standard Webhooks headers of the
     * body (after adding hmac_sha256 to it when the payload is an event array).
     *
     * @param string|array<string, mixed> $payload a body, or an event without hmac_sha256
     *
     * @return array{body: string, headers: array{webhook-id: string, webhook-timestamp: string, webhook-signature: string}}
     */
    public static function sign(string|array $payload, string $secret, ?string $id = null, ?int $timestamp = null): array
    {
        [$key] = self::keys($secret);
        if (\is_array($payload)) {
            $canonical = CanonicalJson::encode(json_decode(Json::encode($payload), false));
            $payload = Json::encode($payload + ['hmac_sha256' => hash_hmac('sha256', $canonical, $key)]);
        }
        $id ??= 'msg_' . bin2hex(random_bytes(12));
        $timestamp ??= time();
        $signature = base64_encode(hash_hmac('sha256', "{$id}.{$timestamp}.{$payload}", $key, true));

        return ['body' => $payload, 'headers' => ['webhook-id' => $id, 'webhook-timestamp' => (string) $timestamp, 'webhook-signature' => "v1,{$signature}"]];
    }

    /**
     * @param string|list<string> $secret
     *
     * @return non-empty-list<string> the HMAC keys: the bytes after whsec_
     */
    private static function keys(string|array $secret): array
    {
        $keys = [];
        foreach ((array) $secret as $one) {
            $encoded = str_starts_with($one, self::SECRET_PREFIX) ? substr($one, \strlen(self::SECRET_PREFIX)) : '';
            $key = base64_decode($encoded, true);
            if ($key === false || $key === '') {
                throw new ConfigurationError('A webhook secret looks like whsec_<base64>');
            }
            $keys[] = $key;
        }
        if ($keys === []) {
            throw new ConfigurationError('Give at least one webhook secret');
        }

        return $keys;
    }

    /** @param array<string, string|list<string>>|MessageInterface $headers */
    private static function header(array|MessageInterface $headers, string $name): string
    {
        if ($headers instanceof MessageInterface) {
            $value = $headers->getHeaderLine($name);
        } else {
            $value = '';
            foreach ($headers as $key => $values) {
                // getallheaders() and $_SERVER spell names differently: HTTP_WEBHOOK_ID, Webhook-Id, webhook-id.
                $normalised = strtolower(str_replace('_', '-', preg_replace('/^HTTP_/i', '', (string) $key) ?? ''));
                if ($normalised === $name) {
                    $value = \is_array($values) ? implode(' ', $values) : $values;
                    break;
                }
            }
        }
        if ($value === '') {
            throw new WebhookVerificationError("The {$name} header is missing");
        }

        return $value;
    }
}
