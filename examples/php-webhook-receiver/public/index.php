<?php

declare(strict_types=1);

// A webhook endpoint that accepts only deliveries signed by Merx.
//
//   MERX_WEBHOOK_SECRET=whsec_… php -S 127.0.0.1:3000 public/index.php
//
// During a secret rotation, give both secrets, comma-separated. Each verified event is appended
// to MERX_WEBHOOK_EVENTS (a JSON Lines file; the server log when unset), once per event id:
// Merx retries until it gets a 2xx, so the same event can arrive more than once.

require getenv('MERX_EXAMPLE_AUTOLOAD') ?: __DIR__ . '/../vendor/autoload.php';

use Merx\Exception\WebhookVerificationError;
use Merx\Webhook;

if ($_SERVER['REQUEST_METHOD'] !== 'POST') {
    http_response_code(405);
    header('Allow: POST');
    exit;
}

$secrets = array_values(array_filter(array_map('trim', explode(',', (string) getenv('MERX_WEBHOOK_SECRET')))));
$payload = (string) file_get_contents('php://input');

try {
    $event = Webhook::verify($payload, getallheaders(), $secrets);
} catch (WebhookVerificationError $e) {
    error_log("refused a webhook: {$e->getMessage()}");
    http_response_code(400);
    exit;
}

$eventsFile = getenv('MERX_WEBHOOK_EVENTS') ?: null;
$seen = $eventsFile !== null && is_file($eventsFile) ? (string) file_get_contents($eventsFile) : '';
if (!str_contains($seen, "\"id\":\"{$event['id']}\"")) {
    $object = $event['data']['object'] ?? [];
    $line = json_encode([
        'id' => $event['id'],
        'topic' => $event['topic'],
        'class' => $event::class,
        'object_id' => $object['id'] ?? null,
        'received_at' => date(DATE_ATOM),
    ], JSON_UNESCAPED_SLASHES) . "\n";
    $eventsFile !== null ? file_put_contents($eventsFile, $line, FILE_APPEND | LOCK_EX) : error_log(trim($line));
}

http_response_code(204);
