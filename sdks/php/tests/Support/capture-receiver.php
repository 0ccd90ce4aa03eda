<?php

declare(strict_types=1);

// A webhook endpoint for tests that keeps each request exactly as it came (headers and raw body)
// in the JSON Lines file CAPTURE_FILE, so a test can verify real deliveries with any secret.
file_put_contents((string) getenv('CAPTURE_FILE'), json_encode(['headers' => getallheaders(), 'body' => (string) file_get_contents('php://input')], \JSON_UNESCAPED_SLASHES) . "\n", \FILE_APPEND | \LOCK_EX);
http_response_code(204);
